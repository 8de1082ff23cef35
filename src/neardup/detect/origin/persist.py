"""Saving and reading origin-detection state: one ``.npz`` file, written atomically.

The one pair every origin checkpoint goes through (the detector's :meth:`save` /
:meth:`load` and the store follower's checkpoint), so the format, the atomic write and the
damage checks live in one place:

* :func:`save_state` writes named arrays plus a checksum (xxh3_64 over every name, dtype,
  shape and byte) to a temporary file whose name is unique to the process and the call
  (``<name>.<pid>.<random>.tmp``), flushes it to disk and renames it over the target, so
  readers see the old file or the new one, never a mix, and two processes saving the same
  state never write through the same temporary file.
* :func:`load_state` reads it back; *any* damage (a missing, empty, truncated or foreign
  file, a flipped byte, a missing checksum) raises :class:`~neardup.errors.StoreError`
  whose message says what is wrong.  It never returns an array it did not verify.

Guarantees: the checksum detects any change of the stored arrays with probability
1 - 2^-64; nothing is unpickled (``allow_pickle=False``).
"""

from __future__ import annotations

import os
import secrets
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from neardup.errors import StoreError

__all__ = ["load_state", "save_state"]

_CHECKSUM = "checksum"


def _digest(arrays: dict[str, np.ndarray[Any, Any]]) -> int:
    h = xxhash.xxh3_64(seed=0x0121_6175)
    for name in sorted(arrays):
        value = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\x00{value.dtype.str}\x00{value.shape}\x00".encode())
        h.update(value.tobytes())
    return int(h.intdigest())


def save_state(path: str | os.PathLike[str], arrays: dict[str, Any]) -> None:
    """Write ``arrays`` (name -> numpy array) to ``path`` atomically, with a checksum."""
    target = Path(path)
    plain = {k: np.asarray(v) for k, v in arrays.items()}
    if _CHECKSUM in plain:
        raise ValueError(f"{_CHECKSUM!r} is reserved")
    plain[_CHECKSUM] = np.array([_digest(plain)], dtype=np.uint64)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **plain)  # type: ignore[arg-type]  # (numpy's stub: names -> arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write origin state {target}: {exc}") from exc


def load_state(path: str | os.PathLike[str]) -> dict[str, np.ndarray[Any, Any]]:
    """The arrays saved by :func:`save_state` at ``path``, verified (module doc)."""
    source = Path(path)
    try:
        with np.load(source, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except FileNotFoundError as exc:
        raise StoreError(f"origin state {source} does not exist") from exc
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise StoreError(f"origin state {source} cannot be read (damaged: {exc})") from exc
    except Exception as exc:  # any other parse failure of a damaged archive
        raise StoreError(f"origin state {source} cannot be read (damaged: {exc!r})") from exc
    stored = arrays.pop(_CHECKSUM, None)
    if stored is None or stored.dtype != np.uint64 or stored.shape != (1,):
        raise StoreError(f"origin state {source} has no checksum (damaged or not an origin state)")
    if int(stored[0]) != _digest(arrays):
        raise StoreError(f"origin state {source} fails its checksum (damaged)")
    return arrays
