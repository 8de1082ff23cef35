"""The work directory of a batch run: per-partition arrays, valid for one run key.

A run saves what it computed per partition (candidate keys, profiles, shuffle shards) as
``.npy`` files, each written atomically, with a ``done`` marker written last; a run started
again with the same inputs and parameters (the same run key) resumes from the partitions
marked done, and any other run key first clears the files.  Only files of the names a run
writes are ever removed: anything else a user keeps in the directory stays.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import numpy as np

from neardup.batch.io import atomic_write_bytes
from neardup.errors import StoreError


class WorkDir:
    """Per-partition intermediate files, valid only for one run key."""

    def __init__(self, path: Path, run_key: str) -> None:
        self.path = path
        try:
            path.mkdir(parents=True, exist_ok=True)
            manifest = path / "manifest.json"
            current = None
            if manifest.exists():
                try:
                    current = json.loads(manifest.read_text("ascii")).get("run_key")
                except ValueError:
                    current = None
            if current != run_key:
                remove_work_files(path)
                atomic_write_bytes(manifest, json.dumps({"run_key": run_key}).encode("ascii"))
        except OSError as exc:
            raise StoreError(f"cannot use work directory {path}: {exc}") from exc

    def _file(self, kind: str, part: int) -> Path:
        return self.path / f"{kind}-{part:06d}.npy"

    def file(self, kind: str, part: int) -> Path:
        """The path of one saved array (``kind`` is ``"sig.<name>"`` or ``"pay.<name>"``)."""
        return self._file(kind, part)

    def save(self, kind: str, part: int, arrays: dict[str, np.ndarray]) -> None:
        """Save named arrays atomically; the ``done`` marker file is written last."""
        save_arrays(self.path, kind, part, arrays)
        self.mark_done(kind, part)

    def mark_done(self, kind: str, part: int) -> None:
        """Write the ``done`` marker of arrays saved without one (by a pool worker)."""
        atomic_write_bytes(self._file(f"{kind}.done", part), b"")

    def discard(self, kind: str, part: int, names: list[str]) -> None:
        """Remove a partition's saved arrays ``names`` and then its ``done`` marker (once
        their content lives elsewhere)."""
        for name in names:
            self._file(f"{kind}.{name}", part).unlink(missing_ok=True)
        self._file(f"{kind}.done", part).unlink(missing_ok=True)

    def done(self, kind: str, part: int) -> bool:
        return self._file(f"{kind}.done", part).exists()

    def load(self, kind: str, part: int, name: str, mmap: bool = False) -> np.ndarray:
        try:
            arr: np.ndarray = np.load(
                self._file(f"{kind}.{name}", part), mmap_mode="r" if mmap else None
            )
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"work file {kind}.{name} of partition {part} is unreadable: {exc}"
            ) from exc
        return arr

    def remove(self) -> None:
        """Delete this run's files (only those), then the directory if it is empty."""
        remove_work_dir(self.path)


def save_arrays(path: Path, kind: str, part: int, arrays: dict[str, np.ndarray]) -> None:
    """Save named arrays of a partition atomically in the work directory ``path``, without
    the ``done`` marker (:class:`WorkDir` writes it; a pool worker leaves it to the driver,
    which first applies the duplicate-id check)."""
    for name, arr in arrays.items():
        target = path / f"{kind}.{name}-{part:06d}.npy"
        tmp = target.with_name(target.name + ".partial")
        try:
            with tmp.open("wb") as fh:
                np.save(fh, np.ascontiguousarray(arr), allow_pickle=False)
            os.replace(tmp, target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(f"cannot write {target}: {exc}") from exc


_WORK_FILE_RE = re.compile(
    r"(?:(?:sig|pay|shard|table)\.[a-z_0-9]+-\d{6}\.npy|manifest\.json)(?:\.partial)?"
)


def remove_work_files(path: Path) -> None:
    """Remove the files a run put in ``path``; anything else a user keeps there stays."""
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_file() and _WORK_FILE_RE.fullmatch(child.name):
            child.unlink(missing_ok=True)


def remove_work_dir(path: Path) -> None:
    """Remove the files a run put in ``path``, then ``path`` itself if that left it empty."""
    remove_work_files(path)
    with contextlib.suppress(OSError):
        path.rmdir()
