"""Shared fixtures: paths to the real data in ../shared/data, skipped cleanly when absent;
the CLI run in-process."""

from __future__ import annotations

import gzip
import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

DATA_DIR = Path(
    os.environ.get("NEARDUP_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


RESEARCH_DIR = Path(__file__).resolve().parents[1] / "research"


def research_module(name: str) -> ModuleType:
    """A script of research/ (not a package: its scripts import each other by name, so the
    folder goes on ``sys.path``, as when one of them is run)."""
    if str(RESEARCH_DIR) not in sys.path:
        sys.path.insert(0, str(RESEARCH_DIR))
    return importlib.import_module(name)


def data_path(*parts: str) -> Path:
    """Path of a file under ../shared/data; skips the test when it is absent."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} (set NEARDUP_DATA to the shared/data folder)")
    return path


def read_jsonl_gz(path: Path, limit: int | None = None) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if limit is not None and i >= limit:
                return
            yield json.loads(line)


@pytest.fixture(scope="session")
def reuters_docs() -> list[dict[str, Any]]:
    """The first 3,000 Reuters-21578 documents (chronological), read in place."""
    return list(read_jsonl_gz(data_path("reuters21578", "docs.jsonl.gz"), limit=3000))


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit code and stderr of one ``neardup`` command run in-process; never a traceback."""
    from neardup.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err
